// Runs the example API: `pnpm start` (PORT defaults to 3000; REDIS_URL switches to Redis).
import { createApp } from './app.js';
import { createStore } from './store.js';

const { store, close, description } = createStore();
const port = Number(process.env.PORT ?? 3000);
const server = createApp({ store }).listen(port, () => {
  console.log(`Floodgate Koa example on http://localhost:${port} (${description})`);
  console.log(`  curl -i -H 'X-App-Key: my-app' http://localhost:${port}/devices`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    server.close();
    void close();
  });
}
