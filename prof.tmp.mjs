import { readFileSync } from 'node:fs';
import { openStore } from '/work/main/dist/src/store/db.js';
import { execute } from '/work/main/dist/src/compute/execute.js';
import { tileGrid, tileAt } from '/work/main/dist/src/tiles/tile-grid.js';
import { setTier1 } from '/work/main/dist/src/compile/executor.js';
import { createTier1 } from '/work/main/dist/src/compile/tier1.js';
setTier1(createTier1({ cacheDir: '/tmp/kcache', maxEntries: 256 }));
const store = openStore(process.argv[2]);
const graph = JSON.parse(readFileSync('/tmp/svc.json','utf8')).process.process_graph;
const c = tileAt(16.7, 47.9, 15);
const times=[]; const st=[];
for (let i=0;i<120;i++){
  const t = { z: 15, x: c.x + (i%12) - 6, y: c.y + Math.floor(i/12) - 5 };
  const t0=performance.now();
  const out = await execute({ graph, userProcesses:{}, maxValues:1e9, limitAdvice:'', region: tileGrid(t,256), output:{format:'PNG', options:{colormap:'ndvi', min:-0.2,max:0.9}} }, store);
  times.push(performance.now()-t0); st.push(out.stages);
}
const med=(a)=>{const s=[...a].sort((x,y)=>x-y); return s[s.length>>1].toFixed(2)};
console.log('total', med(times.slice(20)), 'read', med(st.slice(20).map(s=>s.read)), 'warp', med(st.slice(20).map(s=>s.warp)), 'kernel', med(st.slice(20).map(s=>s.kernel)), 'encode', med(st.slice(20).map(s=>s.encode)));
