# why: a setsid'd, double-forked, nohup'd sleeper escapes its parent; the run answers and no process of it survives on the host
# tiers: runc runsc
# expect: ok
# has: started
(setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 &)
nohup sleep 300 </dev/null >/dev/null 2>&1 &
echo started
