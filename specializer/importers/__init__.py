"""Models from other formats, turned into JAX functions the rest of the tool takes.

tflite        read_tflite(path): a .tflite model as a JAX function of specializer.quant's int8 blocks
              (float ops for float models), with the file's weights and quantization
tflite_file   the flatbuffer read into plain records (tensors, operators, options)
tflite_layer  one operator as a layer; what the op builders share (inputs, constants, padding)
tflite_int8   int8 ops onto the blocks, their parameters derived as TFLite Micro derives them
tflite_float  float32 ops onto plain JAX
"""
