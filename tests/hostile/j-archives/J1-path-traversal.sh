# why: a project file path that climbs out of the work directory is refused before anything runs
# tiers: runc runsc
# path: ../escape.sh
# expect: refused invalid_argument
echo never
