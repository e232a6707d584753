"""Fake of HEAD's ImageClassificationResult (ours)."""


class ImageClassificationResult:
    def __init__(self, top1_class_label, top1_class_probability, output):
        self.top1_class_label = top1_class_label
        self.top1_class_probability = top1_class_probability
        self.output = output
