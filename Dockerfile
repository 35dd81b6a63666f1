# Tollgate container image. Provided for people who run Docker; NOT exercised by this project's tests or
# CI (their machines have no Docker). See docs/deployment.md.
#
#   docker build -t tollgate .
#   docker run -e DATABASE_URL=postgres://… -e REDIS_URL=redis://… -e PROV_DEEPSEEK_API_KEY=… -p 8080:8080 tollgate

FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles from source where no prebuilt binary fits.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY . .
# `npm ci` also builds (the prepare script): dist/ and the dashboard in web/dist/.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/web/dist ./web/dist
COPY --from=build /app/bin ./bin
# The SQLite default writes to ./data; with PostgreSQL nothing is written locally.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 8080
# `serve` runs in this very process, so `docker stop` (SIGTERM) drains in-flight calls. Started as an
# executable, bin/tollgate gives node the flags of its first line (docs/operations.md).
CMD ["bin/tollgate", "serve"]
