"""Issue 35's Jepsen-style harness: real processes in network namespaces the run makes
(netns.py), placed and driven by topology.py (name server, broker group, etcd in controller
mode, clients); the clients' process (workload.py) records every send, commit and offset
query (history.py); nemesis.py injects the faults; readback.py reads every queue after
healing; checkers.py judges the history (pure); run.py ties one run together for
test_failover.py and benchmarks/failover.py."""
