# why: both streams flooded at once (32 MiB each) are capped independently and flagged
# tiers: runc runsc session
# expect: ok
# truncated: yes
import sys
chunk = "y" * 65536 + "\n"
for _ in range(512):
    sys.stdout.write(chunk)
    sys.stderr.write(chunk)
