"""mqadmin: Apache RocketMQ's admin commands, with its command names and flags, as tables for
people and JSON (``--json``) for scripts. Built on the SDK's request layer
(``aiorocketmq.client.core.api``); the requests are those 4.9.8's mqadmin sends (fidelity.md §1.4),
with JSON headers, so every command works against our cluster and an Apache 4.x one alike.

``mqadmin <command> -n <name server> [options] [--json]``; ``python -m aiorocketmq.client.admin``
too.
"""
