// Jest setup of the `fastify-oldest` project: the shared HTTP tables keep only their Fastify rows.
process.env.FLOODGATE_TEST_ONLY_FRAMEWORK = 'fastify';
