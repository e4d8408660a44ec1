// `express4` is the devDependency alias npm:express@4 the suite also runs on; Express 4 ships no
// types of its own, and the parts the test app uses are typed alike in @types/express 5.
declare module 'express4' {
  import express from 'express';
  export default express;
}
