"""The name server: route table, broker registration and liveness, routes by topic.

May import: remoting. Not yet built; see the name server issue.
"""
