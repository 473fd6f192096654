# TraceCup: one image for web (gunicorn), judge workers and beat (see docker-compose.yml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 TRACECUP_VAR_DIR=/app/var
WORKDIR /app
# PostgreSQL's client: manage.py backup and restore run pg_dump and pg_restore.
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-client \
    && rm -rf /var/lib/apt/lists/*
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# Static files are collected at build time and served by WhiteNoise.
RUN SECRET_KEY=build-only DEBUG=1 python manage.py collectstatic --noinput
# /backups: manage.py backup's folder (TRACECUP_BACKUP_DIR; a volume in docker-compose).
RUN useradd --create-home tracecup && mkdir -p /app/var /backups && chown -R tracecup /app/var /backups
USER tracecup
EXPOSE 8000
CMD ["gunicorn", "contest.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "300"]
