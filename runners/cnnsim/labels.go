package cnnsim

// cocoClasses are the 80 COCO detection classes in their usual order (YOLOv4's coco.names and
// YOLOX's COCO_CLASSES): a detection's class_id indexes them.
var cocoClasses = []string{
	"person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
	"traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
	"horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
	"handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
	"baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
	"wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
	"broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant",
	"bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
	"microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
	"teddy bear", "hair drier", "toothbrush",
}

// cityscapesClasses are the 19 Cityscapes training classes of HEAD's U-Net (OSMR
// unet_cityscapes): a mask value indexes them.
var cityscapesClasses = []string{
	"road", "sidewalk", "building", "wall", "fence", "pole", "traffic light", "traffic sign",
	"vegetation", "terrain", "sky", "person", "rider", "car", "truck", "bus", "train",
	"motorcycle", "bicycle",
}
