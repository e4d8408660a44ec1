// `koa2` is the devDependency alias npm:koa@2 the suite also runs on; it ships no types, and the
// parts the test app uses are typed alike in @types/koa 3.
declare module 'koa2' {
  import Koa from 'koa';
  export default Koa;
}
