// WMTS 1.0.0 capabilities for a service: one layer whose tiles are the service's XYZ tiles, in the
// well-known GoogleMapsCompatible tile matrix set (Web Mercator, tile (0, 0) in the north-west),
// offered in the RESTful encoding (a ResourceURL template) and as KVP GetTile.
import type { LonLatBox } from './extent.js';
import { MERCATOR_HALF } from './tile-grid.js';

export interface WmtsInput {
  id: string;
  title: string;
  abstract: string;
  /** WMTS endpoint (KVP requests go here). */
  endpoint: string;
  /** RESTful tile template with {TileMatrix}/{TileCol}/{TileRow}. */
  tileTemplate: string;
  format: 'image/png' | 'image/jpeg';
  extent: LonLatBox | null;
  minZoom: number;
  maxZoom: number;
  tileSize: number;
}

const esc = (s: string) => s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);

/** Scale denominator of zoom 0 for 256-pixel tiles (OGC's 0.28 mm standard pixel). */
const SCALE0 = (2 * MERCATOR_HALF) / 256 / 0.00028;

export function wmtsCapabilities(w: WmtsInput): string {
  const box = w.extent ?? [-180, -85.051129, 180, 85.051129];
  const matrices: string[] = [];
  for (let z = w.minZoom; z <= w.maxZoom; z++) {
    const n = 2 ** z;
    matrices.push(`      <TileMatrix>
        <ows:Identifier>${z}</ows:Identifier>
        <ScaleDenominator>${((SCALE0 * 256) / w.tileSize / n).toPrecision(17)}</ScaleDenominator>
        <TopLeftCorner>${-MERCATOR_HALF} ${MERCATOR_HALF}</TopLeftCorner>
        <TileWidth>${w.tileSize}</TileWidth>
        <TileHeight>${w.tileSize}</TileHeight>
        <MatrixWidth>${n}</MatrixWidth>
        <MatrixHeight>${n}</MatrixHeight>
      </TileMatrix>`);
  }
  const op = (name: string) => `    <ows:Operation name="${name}">
      <ows:DCP><ows:HTTP><ows:Get xlink:href="${esc(w.endpoint)}?">
        <ows:Constraint name="GetEncoding"><ows:AllowedValues><ows:Value>KVP</ows:Value></ows:AllowedValues></ows:Constraint>
      </ows:Get></ows:HTTP></ows:DCP>
    </ows:Operation>`;
  return `<?xml version="1.0" encoding="UTF-8"?>
<Capabilities xmlns="http://www.opengis.net/wmts/1.0" xmlns:ows="http://www.opengis.net/ows/1.1"
  xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:gml="http://www.opengis.net/gml" version="1.0.0">
  <ows:ServiceIdentification>
    <ows:Title>${esc(w.title)}</ows:Title>
    <ows:ServiceType>OGC WMTS</ows:ServiceType>
    <ows:ServiceTypeVersion>1.0.0</ows:ServiceTypeVersion>
  </ows:ServiceIdentification>
  <ows:OperationsMetadata>
${op('GetCapabilities')}
${op('GetTile')}
  </ows:OperationsMetadata>
  <Contents>
    <Layer>
      <ows:Title>${esc(w.title)}</ows:Title>
      <ows:Abstract>${esc(w.abstract)}</ows:Abstract>
      <ows:WGS84BoundingBox>
        <ows:LowerCorner>${box[0]} ${box[1]}</ows:LowerCorner>
        <ows:UpperCorner>${box[2]} ${box[3]}</ows:UpperCorner>
      </ows:WGS84BoundingBox>
      <ows:Identifier>${esc(w.id)}</ows:Identifier>
      <Style isDefault="true"><ows:Identifier>default</ows:Identifier></Style>
      <Format>${w.format}</Format>
      <TileMatrixSetLink><TileMatrixSet>GoogleMapsCompatible</TileMatrixSet></TileMatrixSetLink>
      <ResourceURL format="${w.format}" resourceType="tile" template="${esc(w.tileTemplate)}"/>
    </Layer>
    <TileMatrixSet>
      <ows:Identifier>GoogleMapsCompatible</ows:Identifier>
      <ows:SupportedCRS>urn:ogc:def:crs:EPSG::3857</ows:SupportedCRS>
      <WellKnownScaleSet>urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible</WellKnownScaleSet>
${matrices.join('\n')}
    </TileMatrixSet>
  </Contents>
  <ServiceMetadataURL xlink:href="${esc(w.endpoint)}?service=WMTS&amp;request=GetCapabilities"/>
</Capabilities>
`;
}
