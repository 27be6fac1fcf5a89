"""The official openEO Python client, unmodified, against a Geofabric gateway (docs/protocol.md §16).

Run by test/api/openeo-python-client.test.ts with the Python of a venv holding `openeo` and `rasterio` from PyPI
(OPENEO_PYTHON). Arguments: the gateway's root URL, an API key, the field box and polygon as JSON, a directory
for the downloads. Prints one JSON object with what it observed; the mocha test judges it. Any exception fails.
"""

import hashlib
import json
import sys
from pathlib import Path

import openeo
import rasterio
import requests
from openeo.rest import OpenEoApiError

url, key, field_json, polygon_json, out = sys.argv[1:6]
field = json.loads(field_json)
polygon = json.loads(polygon_json)
out = Path(out)
seen = {}

# connect: the root URL; the client finds /openeo/1.2 through /.well-known/openeo.
connection = openeo.connect(url)
seen["api_url"] = connection.root_url
seen["api_version"] = connection.capabilities().api_version()
connection.authenticate_basic("apikey", key)
seen["user_id"] = connection.describe_account()["user_id"]

seen["collections"] = [c["id"] for c in connection.list_collections()]
description = connection.describe_collection("SENTINEL2_L2A")
seen["bands"] = [b["name"] for b in description["summaries"]["eo:bands"]]

cube = connection.load_collection(
    "SENTINEL2_L2A",
    spatial_extent=field,
    temporal_extent=["2026-02-01", "2026-03-01"],
    bands=["B04", "B08"],
    max_cloud_cover=50,
)

# NDVI, mean over time, as GTiff (read by rasterio, i.e. GDAL) and as JSON.
ndvi = cube.ndvi().reduce_dimension(dimension="t", reducer="mean")
tiff = out / "ndvi.tif"
ndvi.download(tiff, format="GTiff")
with rasterio.open(tiff) as dataset:
    band = dataset.read(1, masked=True)
    seen["gtiff"] = {
        "crs": dataset.crs.to_string(),
        "transform": list(dataset.transform)[:6],
        "size": [dataset.width, dataset.height],
        "count": dataset.count,
        "dtype": dataset.dtypes[0],
        "min": float(band.min()),
        "max": float(band.max()),
        "mean": float(band.mean()),
        "valid": int(band.count()),
        "description": dataset.descriptions[0],
    }
as_json = ndvi.execute()  # no save_result: the back-end answers JSON
seen["json"] = {"order": as_json["order"], "values": sorted({round(v, 6) for row in as_json["data"] for v in row})}

# Band math with cube.band(): the same index from the bands' arithmetic.
b04 = cube.band("B04")
b08 = cube.band("B08")
math = ((b08 - b04) / (b08 + b04)).reduce_dimension(dimension="t", reducer="mean")
math_json = math.download(format="JSON")
math_cube = json.loads(math_json)
seen["band_math"] = sorted({round(v, 6) for row in math_cube["data"] for v in row})

# Zonal mean over a polygon, one value per date.
zonal = cube.ndvi().aggregate_spatial(geometries=polygon, reducer="mean").execute()
seen["aggregate_spatial"] = {"order": zonal["order"], "data": zonal["data"]}

# The guide's time series: clouds masked with the scene classification, then the mean over the polygon per date.
with_scl = connection.load_collection(
    "SENTINEL2_L2A", spatial_extent=field, temporal_extent=["2026-02-01", "2026-03-01"], bands=["B04", "B08", "SCL"]
)
cloud = (with_scl.band("SCL") == 8) | (with_scl.band("SCL") == 9)
series = with_scl.mask(cloud).ndvi().aggregate_spatial(geometries=polygon, reducer="mean").execute()
seen["masked_series"] = series["data"]

# The proof of a result, as the guide checks it: the record names the SHA-256 of the bytes received.
graph = ndvi.save_result(format="GTiff").flat_graph()
res = connection.post("/result", json={"process": {"process_graph": graph}}, expected_status=200)
record = requests.get(f"{url}/store/proof/{res.headers['x-svc-record']}").json()["record"]
seen["proof"] = {
    "payload_type": record["payload_type"],
    "matches": record["payload"]["result"]["sha256"] == hashlib.sha256(res.content).hexdigest(),
    "costs": float(res.headers["OpenEO-Costs"]),
}

# A batch job: created, started and awaited, its results (a STAC Item) downloaded with their metadata; each asset's
# proof record names the SHA-256 of the file downloaded, and the Item links the job's receipt.
job = ndvi.save_result(format="GTiff").create_job(title="NDVI batch")
estimate = job.estimate()
job.start_and_wait(print=lambda *args: print(*args, file=sys.stderr), max_poll_interval=0.2)
results = job.get_results()
files = results.download_files(out / "batch")
metadata = results.get_metadata()
batch_tiff = next(f for f in files if f.suffix == ".tif")
asset = metadata["assets"][batch_tiff.name]
batch_record = requests.get(asset["geofabric:proof"]).json()["record"]
with rasterio.open(batch_tiff) as dataset:
    batch_band = dataset.read(1, masked=True)
    batch_stats = {"crs": dataset.crs.to_string(), "mean": float(batch_band.mean()), "valid": int(batch_band.count())}
seen["batch"] = {
    "status": job.status(),
    "files": sorted(f.name for f in files),
    "type": metadata["type"],
    "matches": batch_record["payload"]["result"]["sha256"] == hashlib.sha256(batch_tiff.read_bytes()).hexdigest(),
    "job_id": batch_record["payload"]["job_id"] == job.job_id,
    "receipt": [link["href"] for link in metadata["links"] if link["rel"] == "receipt"],
    "tiff": batch_stats,
    "listed": job.job_id in [j["id"] for j in connection.list_jobs()],
    "estimate": estimate["costs"],
    "costs": float(results.get_metadata()["properties"]["geofabric:costs"]),
}

# An error the client raises as OpenEoApiError with the back-end's code.
try:
    connection.load_collection("LANDSAT8_L1C", spatial_extent=field, temporal_extent=["2026-02-01", "2026-03-01"]).execute()
    seen["error"] = None
except OpenEoApiError as error:
    seen["error"] = {"code": error.code, "status": error.http_status_code}
try:
    cube.resample_spatial(resolution=20).execute()
    seen["unsupported"] = None
except OpenEoApiError as error:
    seen["unsupported"] = {"code": error.code, "message": error.message}

print(json.dumps(seen))
