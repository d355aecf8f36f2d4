# Sealpost: one image, one service per container (`sealpost start auth|seal|exchange`).
FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:22-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 SEALPOST_DATA_DIR=/var/lib/sealpost
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY scripts ./scripts
# The reader page is built into the image: the container user cannot write to /app at start.
RUN node node_modules/tsx/dist/cli.mjs scripts/build-reader.ts \
 && mkdir -p /var/lib/sealpost && chown node:node /var/lib/sealpost
USER node
EXPOSE 8081 8082 8083 2525
ENTRYPOINT ["node", "bin/sealpost.js"]
CMD ["start", "exchange"]
