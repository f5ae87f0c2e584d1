"""Consumers: what both kinds share (group membership, rebalance, queue allocation, offset
stores, the consumer types) here; ``push`` (PushConsumer, listeners and ``async for``) and
``lite`` (PullConsumer, ``poll``) below."""
