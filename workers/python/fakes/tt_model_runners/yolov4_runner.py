"""Fake of HEAD's tt_model_runners.yolov4_runner (ours): TTYolov4Runner defines run_inference
only (HEAD leaves BaseDeviceRunner's run abstract; the worker runs run_inference), answering per
image HEAD's _format_detections list: {bbox{x1,y1,x2,y2} (fractions of the image), confidence,
class_id, class_name}, over YOLOv4's 0.3 confidence threshold, from the picture's quadrants."""

from tt_model_runners.fake_common import FakeRunner, seconds
from tt_model_runners.forge_runners.runners import COCO, open_image, quadrant_detections


class TTYolov4Runner(FakeRunner):
    def run_inference(self, image_data_list, timeout_seconds=None):
        self.count_call()
        if not isinstance(image_data_list, list):
            image_data_list = [image_data_list]
        self.sleep(image_data_list, 16 * seconds("MOCK_CNN_SECONDS"))
        results = []
        for item in image_data_list:
            img = open_image(item if isinstance(item, (str, bytes)) else item.prompt)
            w, h = img.size
            results.append([{"bbox": {"x1": b[0] / w, "y1": b[1] / h, "x2": b[2] / w, "y2": b[3] / h},
                             "confidence": s, "class_id": c, "class_name": COCO[c]}
                            for c, s, b in quadrant_detections(img)])
        return results

