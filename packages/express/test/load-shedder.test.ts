/**
 * `loadShedder(...)` of @floodgate/express through a real server: the load-shedder table every
 * adapter runs (packages/core/test/http/load-shedder-table.ts), and its option errors.
 */
import * as expressShedder from '@floodgate/express';
import {
  configErrorOf,
  criticalityOf,
  describeLoadShedder,
  held,
  listen,
  type ServeShedder,
} from '@floodgate/http-test-kit';
import express from 'express';

const serveExpress: ServeShedder = (limiter) => {
  const app = express();
  app.use(
    expressShedder.loadShedder({
      limiter,
      criticality: (req) => criticalityOf(req.headers['x-criticality']),
    }),
  );
  app.get('/hold', (_req, res) => {
    held.push(() => res.send('done'));
  });
  app.get('/fast', (_req, res) => {
    res.send('ok');
  });
  return listen(app);
};

describeLoadShedder('express', serveExpress);

it('refuses a bad criticality at construction, naming the field', () => {
  expect(
    configErrorOf(() => expressShedder.loadShedder({ criticality: 'urgent' as never })).field,
  ).toBe('loadShedder.criticality');
});
