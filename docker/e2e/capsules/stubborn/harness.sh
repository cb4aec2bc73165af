# Ignores SIGTERM (and so does its sleep, which inherits the ignored disposition),
# reads the task and never answers: only a SIGKILL ends it.
trap '' TERM
read -r task
exec sleep 2147483647
