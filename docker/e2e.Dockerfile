# The e2e suite's image (e2e/README.md). Built offline by `just e2e-image` from a
# context holding: mur (static musl), busybox (Debian busybox-static), tini-static
# (Debian tini) and e2e/ (docker/e2e: harness scripts, test capsules, rosters).
FROM scratch
LABEL dev.murmur.e2e.image="1"
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
COPY tini-static /sbin/tini
COPY mur /bin/mur
COPY e2e /e2e
RUN ["/bin/sh", "-c", "mkdir -p /root /tmp /e2e/run/events /e2e/work && chmod 1777 /tmp && chmod 755 /e2e/bin/*"]
ENV PATH=/bin HOME=/root
# PID 1 is tini running a long sleep; formations are started with `docker exec`.
ENTRYPOINT ["/sbin/tini", "--"]
CMD ["sleep", "2147483647"]
