"""The Python SDK: Producer, PushConsumer, PullConsumer, transactions and mqadmin.

May import: remoting. Built so far: ``client.api`` (the request layer every sender uses:
typed builders and response parsers, Java's MQClientAPIImpl) and ``client.errors``. The
Producer and the consumers arrive with their issues.
"""
