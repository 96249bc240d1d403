me=$$
uid=$1
measure=$2
shift 2
# Kept: the named pids (the kernels), this script, and the ancestors of each
# (the exec machinery a gateway runs them under may share the guest's uid;
# no process can become an existing process's ancestor).
keep=" "
for p in "$@" "$me"; do
  while [ -n "$p" ] && [ "$p" -gt 1 ] 2>/dev/null; do
    case "$keep" in *" $p "*) break ;; esac
    keep="$keep$p "
    pp=
    while read -r k v rest; do
      [ "$k" = PPid: ] && { pp=$v; break; }
    done 2>/dev/null < "/proc/$p/status"
    p=$pp
  done
done
i=0
while :; do
  left=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$keep" in *" $p "*) continue ;; esac
    u=; st=
    while read -r k v rest; do
      case "$k" in
        State:) st=$v ;;
        Uid:) u=$v; break ;;
      esac
    done 2>/dev/null < "$d/status"
    if [ "$u" = "$uid" ] && [ "$st" != Z ]; then
      kill -9 "$p" 2>/dev/null
      left=$((left + 1))
    fi
  done
  [ "$left" -eq 0 ] && break
  i=$((i + 1))
  [ "$i" -ge 100 ] && { echo "$left guest processes survive" >&2; exit 3; }
  sleep 0.05
done
case "$measure" in
  statfs:*) stat -f -c '%b %f %S' "${measure#statfs:}" ;;
  du:*) du -skc ${measure#du:} 2>/dev/null | { k=; while read -r n rest; do k=$n; done; echo "$k"; } ;;
esac
