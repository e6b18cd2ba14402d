# The tuning service (REST API + background runner). Training jobs run as local processes
# inside this container unless their definition names another launcher.
#   docker build -t tuner-service .
#   docker run -p 8000:8000 -e TUNER_API_TOKEN=... -v tuner-data:/data tuner-service
FROM python:3.11-slim

# tini as PID 1 reaps the training jobs a detached worker leaves running when they end (the
# service does not wait for processes it did not start: they stayed zombies) and forwards signals
RUN apt-get update && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 tuner && mkdir /data && chown tuner /data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY tuner ./tuner
COPY api ./api
RUN pip install --no-cache-dir '.[service,postgres]'

USER tuner
ENV TUNER_DATABASE_URL=sqlite:////data/tuner.db \
    TUNER_RUNS_DIR=/data/runs \
    PYTHONUNBUFFERED=1
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["tuner", "serve", "--host", "0.0.0.0", "--port", "8000", "--runs-dir", "/data/runs"]
