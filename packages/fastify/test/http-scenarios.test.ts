/** The shared HTTP scenario table (@floodgate/http-test-kit) on Fastify, on every store. */
import { describeHttpScenarios, frameworksOf } from '@floodgate/http-test-kit';

describeHttpScenarios(frameworksOf('fastify'));
