# why: artifacts larger than the budget are cut off and flagged, never streamed whole
# tiers: runc runsc
# artifacts: big.bin big2.bin
# expect: ok
# truncated: yes
head -c 50000000 /dev/zero > big.bin
head -c 50000000 /dev/zero > big2.bin
