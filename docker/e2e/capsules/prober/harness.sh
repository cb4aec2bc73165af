# Reads the task, whose text holds the probe's checks (`probe: CHECK... :end`), and runs
# the probe with them and one write its work folder allows, confined as mur started it.
# Its output and status go to the work folder (probe.out, then probe.rc), read from
# outside by the scenario; then it answers, and the task completes.
IFS= read -r task
checks=$(printf '%s' "$task" | sed -n 's/.*probe: \([^"]*\) :end.*/\1/p')
# shellcheck disable=SC2086 # the checks are words
/e2e/bin/mur-probe $checks "write:$MURMUR_WORKDIR/mine=ok" >"$MURMUR_WORKDIR/probe.out" 2>&1
echo $? >"$MURMUR_WORKDIR/probe.rc"
echo '{"type":"message","text":"probed"}'
