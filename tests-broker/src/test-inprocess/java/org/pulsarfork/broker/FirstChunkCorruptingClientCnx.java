/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.pulsarfork.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pulsar.client.impl.ClientCnx;
import org.apache.pulsar.client.impl.conf.ClientConfigurationData;
import org.apache.pulsar.client.impl.metrics.InstrumentProvider;
import org.apache.pulsar.common.api.proto.BaseCommand;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.protocol.ByteBufPair;

/**
 * A replication client connection that flips one payload bit of the first chunk (chunk id 0) of a chunked message
 * on the wire, once per {@code corrupted} flag: the remote answers {@code ChecksumError} before its dedup check,
 * while the producer's own copy stays intact, so upstream's client resends everything pending on the same
 * connection, and the later chunks already sent reach the remote first.
 */
final class FirstChunkCorruptingClientCnx extends ClientCnx {
    private static final short MAGIC_CRC32C = 0x0e01;

    private final AtomicBoolean corrupted;

    FirstChunkCorruptingClientCnx(ClientConfigurationData conf, EventLoopGroup eventLoopGroup,
                                  AtomicBoolean corrupted) {
        super(InstrumentProvider.NOOP, conf, eventLoopGroup);
        this.corrupted = corrupted;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        // Between this handler and the ByteBufPair encoder: it sees each command as the producer wrote it.
        ctx.pipeline().addBefore(ctx.name(), "corrupt-first-chunk-once", new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext handlerCtx, Object msg, ChannelPromise promise) {
                if (msg instanceof ByteBufPair && !corrupted.get() && isFirstChunk((ByteBufPair) msg)
                        && corrupted.compareAndSet(false, true)) {
                    ByteBufPair sent = (ByteBufPair) msg;
                    ByteBuf payload = Unpooled.copiedBuffer(sent.getSecond());
                    int last = payload.writerIndex() - 1;
                    payload.setByte(last, payload.getByte(last) ^ 0x01);
                    ByteBufPair flipped = ByteBufPair.get(sent.getFirst().retainedDuplicate(), payload);
                    sent.release();
                    handlerCtx.write(flipped, promise);
                    return;
                }
                handlerCtx.write(msg, promise);
            }
        });
        super.channelActive(ctx);
    }

    /** A SEND whose metadata says chunk 0 of several (wire format: size, command, magic, checksum, metadata). */
    private static boolean isFirstChunk(ByteBufPair command) {
        ByteBuf headers = command.getFirst().duplicate();
        headers.skipBytes(4);
        int commandSize = headers.readInt();
        BaseCommand cmd = new BaseCommand();
        cmd.parseFrom(headers, commandSize);
        if (cmd.getType() != BaseCommand.Type.SEND) {
            return false;
        }
        headers.readerIndex(8 + commandSize);
        if (headers.readableBytes() < 10 || headers.readShort() != MAGIC_CRC32C) {
            return false;
        }
        headers.skipBytes(4);
        int metadataSize = headers.readInt();
        MessageMetadata metadata = new MessageMetadata();
        metadata.parseFrom(headers, metadataSize);
        return metadata.hasChunkId() && metadata.getChunkId() == 0 && metadata.getNumChunksFromMsg() > 1;
    }
}
