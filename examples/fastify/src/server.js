// Runs the example API: `pnpm start` (PORT defaults to 3000; REDIS_URL switches to Redis).
const { createApp } = require('./app.js');
const { createStore } = require('./store.js');

async function main() {
  const { store, close, description } = createStore();
  const port = Number(process.env.PORT ?? 3000);
  const app = await createApp({ store });
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
