# A stand-in for the official nginx image, for a machine whose only registry is the loopback one
# (hack/stand-ins.sh pushes it as library/nginx:<tag>, which the real node's containerd resolves for
# docker.io): Debian's nginx on the Debian stand-in base. Like the official image, `nginx -g
# 'daemon off;'` runs as whatever uid the pod gives it (charts use 101) with a read-only root, logs to
# stdout/stderr, and serves /usr/share/nginx/html. It is not the official image: never push it elsewhere.
FROM debian:bookworm-slim
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx-light \
 && rm -rf /var/lib/apt/lists/* \
 && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log \
 && mkdir -p /var/cache/nginx /usr/share/nginx/html \
 && { [ -f /usr/share/nginx/html/index.html ] || cp /var/www/html/index.nginx-debian.html /usr/share/nginx/html/index.html; }
LABEL io.helm-operator.stand-in=nginx
EXPOSE 80
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
