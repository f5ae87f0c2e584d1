"""The Python SDK: Producer, PushConsumer, PullConsumer, transactions and mqadmin.

May import: remoting. Not yet built; see the SDK issues.
"""
