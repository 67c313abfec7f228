FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements/ requirements/
RUN pip install --no-cache-dir -r requirements/base.txt
COPY . .
# Static files are collected into the image (var/static), not on every start of the web service.
RUN python manage.py collectstatic --noinput -v0 && useradd --create-home app && mkdir -p var && chown -R app var
USER app
EXPOSE 8000
