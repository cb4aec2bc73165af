# Reads the task line, then leaves an orphan every 100 ms, each dead 200 ms later:
# an `sh -c` that backgrounds a sleep and exits at once (busybox runs a `( … & )`
# subshell in place, which would leave no orphan).
read -r task
while :; do
    sh -c 'sleep 0.2 & exit 0'
    sleep 0.1
done
