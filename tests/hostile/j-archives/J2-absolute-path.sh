# why: an absolute project file path is refused before anything runs
# tiers: runc runsc
# path: /etc/cron.d/escape
# expect: refused invalid_argument
echo never
