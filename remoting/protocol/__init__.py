"""The wire vocabulary shared by every process: codes, commands, frames, headers, messages.

Pure codecs, no I/O. May import: remoting.errors.
"""
