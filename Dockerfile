# syntax=docker/dockerfile:1
# One image for every role: ROLE (controller, dispatcher or all) is chosen at run time.
# Build with `docker build .` (Podman: `podman build --format docker .`, or the
# HEALTHCHECK is dropped from the OCI image format).
# The current Node LTS: every dependency's engines (file-type needs Node 22 or later) are met.
ARG NODE_VERSION=24

# Compile TypeScript and build the console (dist/console) with the dev dependencies.
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/agent-sdk/package.json ./packages/agent-sdk/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY packages ./packages
COPY src ./src
COPY console ./console
# The agent SDK workspace first: the bundled example agents import it; then the server and the console.
RUN npm run build

# Production dependencies only: no dev tools (TypeScript included, which only a
# Swagger build plugin would use) and no optional ones (PGlite, the embedded PostgreSQL
# for local use: the image runs against DATABASE_URL).
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/agent-sdk/package.json ./packages/agent-sdk/
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund \
 && npm cache clean --force \
 && test ! -e node_modules/typescript && test ! -e node_modules/@electric-sql/pglite

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    ROLE=all \
    HOST=0.0.0.0 \
    CONTROLLER_PORT=8000 \
    DISPATCHER_PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
RUN groupadd --gid 10001 app \
 && useradd --uid 10001 --gid app --no-create-home --home-dir /app --shell /usr/sbin/nologin app \
 && mkdir -p /data \
 && chown app:app /data
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/packages/agent-sdk/package.json ./packages/agent-sdk/
COPY --from=build /app/packages/agent-sdk/dist ./packages/agent-sdk/dist
COPY package.json ./
COPY docker/healthcheck.cjs ./docker/healthcheck.cjs
USER 10001:10001
EXPOSE 8000 8080
VOLUME ["/data"]
# GETs the role's /livez (both for ROLE=all); any answer but 200 is unhealthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \
  CMD ["node", "docker/healthcheck.cjs"]
ENTRYPOINT ["node", "dist/src/main.js"]
