"""Running a cluster: ``mqcluster`` (``make run``, ``aiorocketmq.deploy.launcher``) starts a local
one as child processes; ``deploy/docker-compose.yml`` and ``deploy/Dockerfile`` run one in
containers (``deploy/README.md``). The launcher imports none of the servers' packages: it runs
them."""
