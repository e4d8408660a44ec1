// Runs the example API: `pnpm start` (PORT defaults to 3000; REDIS_URL switches to Redis;
// TRUST_PROXY, e.g. '10.0.0.0/8' or '127.0.0.1', lists the reverse proxies in front of it).
const { createApp } = require('./app.js');
const { createStore } = require('./store.js');

async function main() {
  const { store, close, description } = createStore();
  const port = Number(process.env.PORT ?? 3000);
  const trustProxy = process.env.TRUST_PROXY || undefined;
  const app = await createApp({ store, trustProxy });
  await app.listen({ port });
  console.log(`Floodgate Fastify example on http://localhost:${port} (${description})`);
  console.log(`  curl -i http://localhost:${port}/health`);
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      void app.close().then(close);
    });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
