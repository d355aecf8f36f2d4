# Sealpost: one image, one service per container (`sealpost start auth|seal|exchange`).
# The image runs the compiled server (`npm run build`: src → dist/server by tsc, the reader page web/reader →
# static files in dist/reader by esbuild) with plain node: no TypeScript loader in memory (about 50 MB less RSS
# per process than tsx). The build stage has the development dependencies (tsc, tsx, esbuild); the image
# ships without them.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY web ./web
COPY scripts ./scripts
RUN npm run build

FROM node:22-bookworm-slim AS deps
WORKDIR /app
# pkcs11js, the optional binding to a hardware security module's PKCS#11 library (SEAL_KEY_PKCS11_MODULE), is a
# native addon built here; the image gets the built node_modules, not the compiler.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:22-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 SEALPOST_DATA_DIR=/var/lib/sealpost
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
RUN mkdir -p /var/lib/sealpost && chown node:node /var/lib/sealpost
USER node
EXPOSE 8081 8082 8083 2525
ENTRYPOINT ["node", "dist/server/cli/main.js"]
CMD ["start", "exchange"]
