"""ACL 1.0 on the server side, as Apache RocketMQ 4.9.8's ``acl`` module (PlainAccessValidator,
PlainPermissionManager): the rules read from ``plain_acl.yml`` and the ``*.yml`` files of an
ACL directory, the check of each request against them, the guard a RemotingServer runs before
dispatch, the hot reload of the files and their rewrite by the management codes (50-53).

Shared by the broker and the name server; imports only ``aiorocketmq.remoting`` (and PyYAML,
in ``files`` and ``edit``). Pure modules: ``permission``, ``address``, ``errors``, ``rules``,
``resources``, ``validator``, ``edit``; I/O shells: ``files``, ``guard``, ``watch``.
"""
