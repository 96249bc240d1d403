# why: artifacts that are symlinks (to the image's secrets, to /proc, to a directory) are never followed; only regular files in /work come back
# tiers: runc runsc
# artifacts: shadow environ root up/x real.txt
# expect: ok
# has: artifact real.txt real
# lacks: artifact shadow
# lacks: artifact environ
# lacks: artifact root
ln -s /etc/shadow shadow
ln -s /proc/1/environ environ
ln -s / root
ln -s .. up
echo real > real.txt
