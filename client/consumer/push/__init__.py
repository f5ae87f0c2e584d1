"""The push consumer (DefaultMQPushConsumer): a pull loop per owned queue feeding listeners,
concurrently or in order, with retries through the broker."""
