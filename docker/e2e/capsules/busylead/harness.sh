# Reads the task line, then works on it forever (until mur cancels the task and
# kills this process group).
read -r task
exec sleep 2147483647
