"""Fake of HEAD's SD3.5 runner (ours): the SDXL fake with SD3.5's class name; like HEAD's, it
serves one request per call."""

from tt_model_runners.sdxl_generate_runner_trace import TTSDXLGenerateRunnerTrace


class TTSD35Runner(TTSDXLGenerateRunnerTrace):
    def is_request_batchable(self, request, batch=None):
        return not batch
