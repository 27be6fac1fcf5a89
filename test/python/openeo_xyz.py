"""The official openEO Python client, unmodified, publishing an XYZ map layer (docs/protocol.md §16.10).

Run by test/api/openeo-python-xyz.test.ts with the Python of a venv holding `openeo` from PyPI (OPENEO_PYTHON).
Arguments: the gateway's root URL, an API key, the field box as JSON, the tile (z, x, y) as JSON. Prints one JSON
object with what it observed; the mocha test judges it. Any exception fails.
"""

import hashlib
import json
import sys

import openeo
import requests
from openeo.rest import OpenEoApiError

url, key, field_json, tile_json = sys.argv[1:5]
field = json.loads(field_json)
z, x, y = json.loads(tile_json)
seen = {}

connection = openeo.connect(url)
connection.authenticate_basic("apikey", key)
seen["service_types"] = sorted(connection.list_service_types().keys())

cube = connection.load_collection(
    "SENTINEL2_L2A",
    spatial_extent=field,
    temporal_extent=["2026-02-01", "2026-03-01"],
    bands=["B04", "B08"],
)
ndvi = cube.ndvi().reduce_dimension(dimension="t", reducer="mean")
service = ndvi.tiled_viewing_service(type="XYZ", title="NDVI", configuration={"colormap": "RdYlGn"})
seen["listed"] = [s["id"] for s in connection.list_services()] == [service.service_id]
description = service.describe_service()
seen["type"] = description["type"]
seen["configuration"] = description["configuration"]

# A map client's request: no credentials, the URL is the capability.
tile_url = description["url"].replace("{z}", str(z)).replace("{x}", str(x)).replace("{y}", str(y))
res = requests.get(tile_url)
seen["tile"] = {
    "status": res.status_code,
    "content_type": res.headers.get("content-type"),
    "png": res.content[:8] == b"\x89PNG\r\n\x1a\n",
    "record": res.headers.get("x-svc-record"),
}
record = requests.get(f"{url}/store/proof/{res.headers['x-svc-record']}").json()["record"]
seen["proof"] = {
    "payload_type": record["payload_type"],
    "matches": record["payload"]["result"]["sha256"] == hashlib.sha256(res.content).hexdigest(),
    "service_id": record["payload"]["service_id"] == service.service_id,
}
seen["costs"] = service.describe_service()["costs"]
seen["logs"] = len(service.logs())

errors = {}
try:
    cube.tiled_viewing_service(type="XYZ")
except OpenEoApiError as e:
    errors["two_bands"] = e.code
try:
    ndvi.tiled_viewing_service(type="WMS")
except OpenEoApiError as e:
    errors["wms"] = e.code
service.delete_service()
try:
    service.describe_service()
except OpenEoApiError as e:
    errors["deleted"] = [e.code, e.http_status_code]
seen["errors"] = errors

print(json.dumps(seen))
