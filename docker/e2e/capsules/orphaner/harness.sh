# Reads the task line, then every 100 ms starts a process that leaves a zombie for
# 0.8 s: an `sh -c` that backgrounds a 0.2 s sleep and execs a 1 s one, which never
# reaps it; at its end the zombie is reparented to the harness (a subreaper), which
# must reap it. (A plain `sh -c 'sleep & exit'` leaves an orphan whose zombie the
# harness reaps at once, too briefly for any scan to see.)
read -r task
while :; do
    sh -c 'sleep 0.2 & exec sleep 1' &
    sleep 0.1
done
