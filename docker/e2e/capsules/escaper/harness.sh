# Reads the task, starts a grandchild that escapes every process group it could be
# killed with (a double fork, then setsid) and ignores SIGTERM, then works forever.
# Only mur's sweep of its descendants ends the grandchild (docs/design/descendants.md).
read -r task
( setsid sh -c 'trap "" TERM; exec sleep 2147483646' </dev/null >/dev/null 2>&1 & )
exec sleep 2147483647
