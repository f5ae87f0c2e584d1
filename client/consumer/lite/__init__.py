"""The lite pull consumer (DefaultLitePullConsumer): ``poll()`` over assigned or subscribed
queues, and the raw pulls the Spark connector reads with."""
