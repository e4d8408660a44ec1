/** The shared HTTP scenario table (@floodgate/http-test-kit) on Koa 3 and Koa 2, on every store. */
import { describeHttpScenarios, frameworksOf } from '@floodgate/http-test-kit';

describeHttpScenarios(frameworksOf('koa'));
