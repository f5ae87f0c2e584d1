"""RemotingCommand framing over TCP, the shared wire vocabulary, and the process runtime.

May import: nothing else of ours (namesrv, broker, client and spark all build on it).
"""
