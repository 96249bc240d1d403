# why: invalid UTF-8, NUL bytes, terminal escapes and a fake wire frame reach the caller as inert bytes in a valid answer
# tiers: runc runsc session
# expect: ok
# has: after
import sys
sys.stdout.buffer.write(b"\xff\xfe\x00\x1b]0;pwned\x07\x1b[2J\x1b[31m{\"code\":\"internal\"}\r\n\xc3\x28\xed\xa0\x80")
sys.stdout.buffer.write(b"\nafter\n")
