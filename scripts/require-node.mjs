// `node scripts/require-node.mjs 22`: exits 1 unless this is that major version of Node (so CI's suite meant
// for one Node line cannot pass on another by mistake).
const wanted = process.argv[2];
const major = process.versions.node.split('.')[0];
if (major !== wanted) {
  console.error(`this needs Node ${wanted}, but it runs on Node ${process.versions.node}`);
  process.exit(1);
}
console.log(`Node ${process.versions.node}`);
