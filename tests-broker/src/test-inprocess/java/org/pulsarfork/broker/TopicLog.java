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

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.pulsar.broker.service.persistent.ReplicationRetryBackoff;
import org.apache.pulsar.common.naming.TopicName;

/**
 * The log lines (level and text, attributes included: the 5.x structured logger puts the topic and the figures
 * there) that name one topic, from the moment it is opened until it is closed.
 */
final class TopicLog extends AbstractAppender implements AutoCloseable {
    final String localName;
    // The first lines, for the assertions that read them; upstream's loop logs thousands a second.
    final List<String> lines = new CopyOnWriteArrayList<>();
    final AtomicInteger lineCount = new AtomicInteger();
    final AtomicInteger rewinds = new AtomicInteger();
    final AtomicInteger errors = new AtomicInteger();
    private Runnable remove;

    private TopicLog(String topic) {
        super("topic-log", null, null, true, Property.EMPTY_ARRAY);
        this.localName = TopicName.get(topic).getLocalName();
        start();
    }

    // Every line of the broker and the replication client at INFO and above, the cursor's rewinds included.
    static TopicLog ofBroker(String topic) {
        TopicLog log = new TopicLog(topic);
        LoggerContext context = (LoggerContext) LogManager.getContext(false);
        Logger cursorLog = context.getLogger("org.apache.bookkeeper.mledger.impl.ManagedCursorImpl");
        Level cursorLevel = cursorLog.getLevel();
        context.getConfiguration().getRootLogger().addAppender(log, Level.INFO, null);
        context.updateLoggers();
        // After updateLoggers, which resets a level set on the logger itself.
        cursorLog.setLevel(Level.INFO);
        log.remove = () -> {
            context.getConfiguration().getRootLogger().removeAppender(log.getName());
            context.updateLoggers();
            cursorLog.setLevel(cursorLevel);
        };
        return log;
    }

    // The lines of the replication backoff only.
    static TopicLog ofBackoff(String topic) {
        TopicLog log = new TopicLog(topic);
        Logger backoffLog = ((LoggerContext) LogManager.getContext(false))
                .getLogger(ReplicationRetryBackoff.class.getName());
        Level backoffLevel = backoffLog.getLevel();
        // After addAppender, which gives the logger a configuration of its own at its parent's level.
        backoffLog.addAppender(log);
        backoffLog.setLevel(Level.INFO);
        log.remove = () -> {
            backoffLog.removeAppender(log);
            backoffLog.setLevel(backoffLevel);
        };
        return log;
    }

    @Override
    public void append(LogEvent event) {
        String message = event.getMessage().getFormattedMessage() + " " + event.getContextData().toMap();
        if (!message.contains(localName)) {
            return;
        }
        if (lineCount.incrementAndGet() <= 1_000) {
            lines.add(event.getLevel() + " " + message);
        }
        if (message.contains("Rewind from") && message.contains("pulsar.repl")) {
            rewinds.incrementAndGet();
        } else if (event.getLevel().isMoreSpecificThan(Level.ERROR)) {
            errors.incrementAndGet();
        }
    }

    @Override
    public void close() {
        remove.run();
        stop();
    }
}
