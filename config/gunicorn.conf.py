"""gunicorn settings for the web app: `gunicorn -c config/gunicorn.conf.py config.wsgi`.

Used by docker-compose's web service and by bench/review_bench.py, so the benchmark measures the
deployment's configuration. Override with GUNICORN_WORKERS / GUNICORN_THREADS / GUNICORN_BIND."""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Threads keep annotators' keep-alive connections without a process each; processes give the
# CPU-bound part (templates, Markdown) every core despite the GIL.
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() + 1))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# gunicorn touches a heartbeat file per request: on tmpfs that is a memory write, not a disk one.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "30"))
# Behind a proxy that terminates TLS, trust its X-Forwarded-* headers only from these addresses.
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
