"""The SDK's core: the client instance a process shares (routes, connections, heartbeats),
the request layer (``api``, Java's MQClientAPIImpl), messages, errors and the send path's
pieces (queue selection, latency fault avoidance, validation). Producers and consumers build
on it; it imports neither."""
