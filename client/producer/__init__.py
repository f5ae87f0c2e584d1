"""Producers: ``Producer`` (DefaultMQProducer) and ``TransactionProducer``
(TransactionMQProducer), on the core's instance and request layer."""
